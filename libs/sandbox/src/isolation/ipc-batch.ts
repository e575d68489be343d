/**
 * Messages to one IPC peer, sent as one array per turn of the event loop: with
 * many tasks in flight, one write (and one wake-up of the peer) carries many.
 */
export class IpcBatch<M> {
  private queue: M[] = [];
  private scheduled = false;

  constructor(private readonly send: (batch: M[]) => void) {}

  push(message: M): void {
    this.queue.push(message);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  flush(): void {
    this.scheduled = false;
    if (!this.queue.length) return;
    const batch = this.queue;
    this.queue = [];
    this.send(batch);
  }
}
