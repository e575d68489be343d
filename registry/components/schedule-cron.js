// Emits an event on a cron schedule.
module.exports = {
  key: "schedule-cron",
  name: "Cron",
  description: "Emits an event on a 5-field cron schedule, with an optional IANA timezone.",
  version: "1.0.1",
  type: "source",
  props: {
    timer: { type: "$.interface.timer", label: "Schedule", default: { cron: "0 * * * *" } },
  },
  async run(event) {
    const ts = typeof event?.timestamp === "number" ? event.timestamp * 1000 : Date.now();
    this.$emit({ timestamp: event?.timestamp, cron: event?.cron }, { id: String(ts), ts, summary: `cron ${event?.cron ?? ""} at ${new Date(ts).toISOString()}` });
  },
};
