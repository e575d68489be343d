// HTTP source that answers each request itself (customResponse) and emits the request.
export default {
  key: "http-custom-response",
  name: "Custom Response",
  description: "Emits every HTTP request sent to its endpoint and answers with the configured status and body.",
  version: "1.0.1",
  type: "source",
  props: {
    http: { type: "$.interface.http", customResponse: true },
    status: { type: "integer", label: "Response status", description: "HTTP status code of the answer", min: 100, max: 599, optional: true, default: 200 },
    body: { type: "string", label: "Response body", description: "Body of the answer (JSON text is sent as application/json)", optional: true, default: "{\"success\":true}" },
  },
  methods: {
    contentType(body) {
      try {
        JSON.parse(body);
        return "application/json";
      } catch {
        return "text/plain; charset=utf-8";
      }
    },
  },
  async run(event) {
    const body = this.body ?? "{\"success\":true}";
    await this.http.respond({ status: this.status ?? 200, headers: { "content-type": this.contentType(body) }, body });
    this.$emit(
      { method: event.method, path: event.path, query: event.query, headers: event.headers, body: event.body },
      { summary: `${event.method} ${event.path}` },
    );
  },
};
