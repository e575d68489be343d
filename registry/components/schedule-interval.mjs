// Emits an event on a fixed interval.
export default {
  key: "schedule-interval",
  name: "Interval",
  description: "Emits an event every N seconds (15 seconds at least).",
  version: "1.0.1",
  type: "source",
  props: {
    timer: { type: "$.interface.timer", label: "Interval", default: { intervalSeconds: 60 } },
  },
  async run(event) {
    const ts = typeof event?.timestamp === "number" ? event.timestamp * 1000 : Date.now();
    this.$emit({ timestamp: event?.timestamp, interval_seconds: event?.interval_seconds }, { id: String(ts), ts, summary: `tick at ${new Date(ts).toISOString()}` });
  },
};
