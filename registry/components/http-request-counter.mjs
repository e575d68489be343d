// Counts the requests its endpoint receives in $.service.db and emits the running count.
export default {
  key: "http-request-counter",
  name: "Request Counter",
  description: "Counts HTTP requests in $.service.db and emits { count } for each one.",
  version: "1.0.0",
  type: "source",
  props: {
    http: "$.interface.http",
    db: "$.service.db",
  },
  hooks: {
    async deploy() {
      if (this.db.get("count") === undefined) this.db.set("count", 0);
    },
  },
  async run(event) {
    const count = (this.db.get("count") ?? 0) + 1;
    this.db.set("count", count);
    this.$emit({ count, method: event.method, path: event.path }, { summary: `request #${count}` });
  },
};
