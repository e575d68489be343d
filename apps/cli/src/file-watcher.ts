import { FSWatcher, watch } from 'node:fs';
import { dirname, join } from 'node:path';
import { red, note } from './output';

const DEBOUNCE_MS = 300;

/**
 * Watches the directories of a component's files (editors often replace a file
 * instead of writing it, which ends a watch on the file itself) and calls
 * `onChange` once per burst of saves.
 */
export class ComponentWatcher {
  private watchers = new Map<string, FSWatcher>();
  private files = new Set<string>();
  private timer?: NodeJS.Timeout;

  constructor(private readonly onChange: () => void) {}

  track(inputs: string[]): void {
    this.files = new Set(inputs);
    const dirs = new Set(inputs.map((f) => dirname(f)));
    for (const [dir, w] of this.watchers) {
      if (!dirs.has(dir)) {
        w.close();
        this.watchers.delete(dir);
      }
    }
    for (const dir of dirs) {
      if (this.watchers.has(dir)) continue;
      const w = watch(dir, (_event, name) => {
        if (name && !this.files.has(join(dir, name.toString()))) return;
        clearTimeout(this.timer);
        this.timer = setTimeout(this.onChange, DEBOUNCE_MS);
      });
      w.on('error', (e) => note(red(`watch ${dir}: ${e.message}`)));
      this.watchers.set(dir, w);
    }
  }

  close(): void {
    clearTimeout(this.timer);
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
  }
}

