import type { WorkerTask } from '../worker-protocol';
import { HostProcess } from './host-process';

/**
 * The app's end of the channel against a host process that writes what it likes: a real child process (node), whose
 * script answers each task it is sent with frames it builds itself, as code in a sandbox can.
 */
function scriptedHost(answer: string): HostProcess {
  const script = `
    const fs = require("fs"), v8 = require("v8");
    const frame = (m) => { const b = v8.serialize(m); const h = Buffer.alloc(4); h.writeUInt32BE(b.length); return Buffer.concat([h, b]); };
    const send = (m) => fs.writeSync(3, frame(m));
    const answer = (ids) => { ${answer} };
    let buf = Buffer.alloc(0); const ids = [];
    const channel = new (require("net").Socket)({ fd: 3, readable: true, writable: true });
    channel.on("data", (d) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 4 && buf.length >= 4 + buf.readUInt32BE(0)) {
        const m = v8.deserialize(buf.subarray(4, 4 + buf.readUInt32BE(0)));
        buf = buf.subarray(4 + buf.readUInt32BE(0));
        if (m.t === "run") { ids.push(m.id); if (ids.length === 2) answer(ids); }
      }
    });
    send({ t: "ready" });`;
  const host = new HostProcess({ account: 'u_test', command: process.execPath, args: ['-e', script], env: {}, memoryMb: 1024, tmpMb: 64, runIn: 'workers', heapMb: 64 });
  host.start();
  return host;
}

const task = { kind: 'describe', bundle: { key: 'k', path: '/x.cjs', format: 'cjs' }, timeoutMs: 5000 } as WorkerTask;

describe('HostProcess reading answers in pieces', () => {
  let host: HostProcess | undefined;
  afterEach(() => host?.kill({ name: 'Test', message: 'done' }));

  it('puts an answer together from its pieces', async () => {
    host = scriptedHost(`
      send({ t: "piece", id: ids[0], path: [], entries: [["list", []], ["text", ""]] });
      send({ t: "piece", id: ids[0], path: ["list"], from: 0, items: [1, 2] });
      send({ t: "piece", id: ids[0], path: ["text"], text: "ab" });
      send({ t: "piece", id: ids[0], path: ["list"], from: 2, items: [{ k: 3 }] });
      send({ t: "done", id: ids[0], out: { value: {} } });
      send({ t: "done", id: ids[1], out: { value: "second" } });`);
    const [first, second] = await Promise.all([host.run(task, 5000), host.run(task, 5000)]);
    expect([first, second]).toEqual([{ value: { list: [1, 2, { k: 3 }], text: 'ab' } }, { value: 'second' }]);
  });

  it("stops a host that sends pieces of two answers at once (each could hold up to its bound in the app)", async () => {
    host = scriptedHost(`
      send({ t: "piece", id: ids[0], path: [], entries: [["a", 1]] });
      send({ t: "piece", id: ids[1], path: [], entries: [["b", 2]] });`);
    const outcomes = await Promise.all([host.run(task, 5000), host.run(task, 5000)]);
    for (const o of outcomes) expect(o).toEqual({ failed: { name: 'SandboxProtocolError', message: expect.stringContaining('(pieces of two answers at once)') } });
  });

  it('stops a host whose pieces do not fit the answer', async () => {
    host = scriptedHost(`
      send({ t: "piece", id: ids[0], path: [], entries: [["a", 1]] });
      send({ t: "piece", id: ids[0], path: ["nowhere"], entries: [["a", 1]] });`);
    const outcomes = await Promise.all([host.run(task, 5000), host.run(task, 5000)]);
    for (const o of outcomes) expect(o).toEqual({ failed: { name: 'SandboxProtocolError', message: expect.stringContaining('(a piece for no array or object)') } });
  });
});
