/**
 * Component code that attacks the platform from inside a deployed source: each
 * probe tries one way out and reports what it got. The source answers its HTTP
 * request with the report (customResponse), so a test sees exactly what hostile
 * code could see.
 */
export function attackerSource(targets: { dataDir: string; root: string; natsPort: number; pgPort: number; apiPort: number; loopbackPort: number }): string {
  return `module.exports = {
  name: "Attacker", version: "1",
  props: { http: { type: "$.interface.http", customResponse: true }, db: "$.service.db" },
  async run(event) {
    const fs = require("fs"), net = require("net"), out = {};
    const t = (k, f) => { try { out[k] = "OK " + String(f()).slice(0, 300); } catch (e) { out[k] = "DENIED " + (e.code || e.name); } };
    t("environ", () => fs.readFileSync("/proc/self/environ", "utf8"));
    t("parentEnviron", () => fs.readFileSync("/proc/1/environ", "utf8"));
    t("processEnv", () => { const keys = Object.keys(process.env); if (keys.some((k) => /DATABASE|NATS|SECRET/.test(k))) return keys.join(","); throw Object.assign(new Error(), { code: "EMPTY" }); });
    t("secretsKey", () => fs.readFileSync(${JSON.stringify(targets.dataDir + '/secrets.key')}));
    t("demoAccount", () => fs.readFileSync(${JSON.stringify(targets.dataDir + '/demo-account.json')}, "utf8"));
    t("sharedBundles", () => fs.readdirSync(${JSON.stringify(targets.dataDir + '/npm/bundles')}).join(","));
    t("writeSharedBundle", () => fs.writeFileSync(${JSON.stringify(targets.dataDir + '/npm/bundles/evil.cjs')}, "x"));
    t("writeDist", () => fs.writeFileSync(${JSON.stringify(targets.root + '/dist/evil.js')}, "x"));
    t("writeNodeModules", () => fs.writeFileSync(${JSON.stringify(targets.root + '/node_modules/evil.js')}, "x"));
    t("writeOwnCode", () => fs.writeFileSync("/code/bundles/" + fs.readdirSync("/code/bundles")[0], "x"));
    t("procMem", () => fs.readFileSync("/proc/self/mem"));
    t("childProcess", () => require("child_process").execSync("id").toString());
    t("inspector", () => { const s = new (require("inspector").Session)(); s.connect(); return "connected"; });
    t("binding", () => process.binding("fs"));
    t("uid", () => { if (process.getuid() === 0) return "root"; throw Object.assign(new Error(), { code: "UNPRIVILEGED" }); });
    t("tmpWrite", () => { fs.writeFileSync("/tmp/mine.txt", "scratch"); return fs.readFileSync("/tmp/mine.txt", "utf8"); });
    t("tmpFill", () => { const mb = Buffer.alloc(1 << 20); for (let i = 0; i < 100000; i++) fs.appendFileSync("/tmp/fill", mb); return "no limit"; });
    try { fs.unlinkSync("/tmp/fill"); } catch (e) {}
    const dial = (k, port, host = "127.0.0.1") => new Promise((r) => {
      const s = net.connect(port, host);
      s.on("connect", () => { out[k] = "OK connected"; s.destroy(); r(); });
      s.on("error", (e) => { out[k] = "DENIED " + e.code + " " + e.message; r(); });
    });
    await dial("nats", ${targets.natsPort});
    await dial("postgres", ${targets.pgPort});
    await dial("api", ${targets.apiPort});
    await dial("loopback", ${targets.loopbackPort});
    await dial("metadata", 80, "169.254.169.254");
    // Below JavaScript: a fresh worker thread would have no egress client at all (its sockets would meet an empty
    // network namespace), and one with its own execArgv would run outside the permission model: workers are refused.
    out.rawSocket = await new Promise((r) => {
      const { Worker } = require("worker_threads");
      let w;
      try { w = new Worker("const s = require('net').connect(${targets.loopbackPort}, '127.0.0.1'); s.on('connect', () => { require('worker_threads').parentPort.postMessage('OK connected'); s.destroy(); }); s.on('error', (e) => require('worker_threads').parentPort.postMessage('DENIED ' + e.code));", { eval: true, execArgv: [] }); } catch (e) { return r("DENIED " + (e.code || e.message)); }
      w.on("message", (m) => { r(m); w.terminate(); });
      w.on("error", (e) => r("DENIED " + (e.code || e.message)));
    });
    const own = fs.readdirSync("/code/bundles").filter((f) => f.endsWith(".cjs"));
    out.codeVisible = own.map((f) => fs.readFileSync("/code/bundles/" + f, "utf8")).join("\\n").includes(["VICTIM", "MARKER"].join("-")) ? "OK victim code visible" : "DENIED " + own.length + " own bundles only";
    this.http.respond({ status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify(out) });
  },
};`;
}

/** The victim: holds a secret prop and answers with it (so the tests can tell it still works). */
export const VICTIM_SOURCE = `module.exports = {
  name: "Victim", version: "1",
  props: { http: { type: "$.interface.http", customResponse: true }, token: { type: "string", secret: true, label: "Token" } },
  async run(event) {
    // "VICTIM-MARKER": a string only the victim's code contains (the attacker looks for it in every bundle it can read).
    this.$emit({ got: event.body, marker: "VICTIM-MARKER" }, { summary: "victim event" });
    this.http.respond({ status: 200, body: "victim ok " + this.token.length });
  },
};`;

/** Leaves a hook on Function.prototype.call in its sandbox and reports whatever `this` it caught. */
export const HOOK_SOURCE = `module.exports = {
  name: "Hook", version: "1",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) {
    const g = globalThis;
    if (!g.__caught) {
      g.__caught = [];
      const call = Function.prototype.call;
      Function.prototype.call = function (self, ...args) { try { if (self && typeof self === "object" && self.token) g.__caught.push(String(self.token)); } catch (e) {} return call.apply(this, [self, ...args]); };
    }
    this.http.respond({ status: 200, body: JSON.stringify(g.__caught) });
  },
};`;
