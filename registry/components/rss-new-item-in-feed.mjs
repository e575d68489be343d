// Polls an RSS 2.0 or Atom feed and emits each item it has not emitted before.
import { axios } from "@pipedream/platform";

const ENTITIES = { amp: "&", lt: "<", gt: ">", quot: "\"", apos: "'" };

export default {
  key: "rss-new-item-in-feed",
  name: "New Item in Feed",
  description: "Emits new items of an RSS or Atom feed, oldest first.",
  version: "1.0.0",
  type: "source",
  dedupe: "unique",
  props: {
    timer: { type: "$.interface.timer", label: "Polling interval", default: { intervalSeconds: 900 } },
    url: { type: "string", label: "Feed URL", description: "URL of an RSS 2.0 or Atom feed" },
    maxItems: { type: "integer", label: "Items per poll", description: "Emit at most this many of the newest items per poll", min: 1, max: 100, optional: true, default: 20 },
  },
  methods: {
    decode(text) {
      const raw = text.replace(/^\s*<!\[CDATA\[([\s\S]*?)\]\]>\s*$/, "$1");
      return raw
        .replace(/&#(\d+);/g, (_, n) => String.fromCodePoint(Number(n)))
        .replace(/&#x([0-9a-f]+);/gi, (_, n) => String.fromCodePoint(parseInt(n, 16)))
        .replace(/&(amp|lt|gt|quot|apos);/g, (_, e) => ENTITIES[e])
        .trim();
    },
    tag(block, name) {
      const m = new RegExp(`<${name}(?:\\s[^>]*)?>([\\s\\S]*?)</${name}>`, "i").exec(block);
      return m ? this.decode(m[1]) : undefined;
    },
    link(block) {
      const atom = /<link\b[^>]*?href=["']([^"']+)["'][^>]*>/i.exec(block);
      return atom ? this.decode(atom[1]) : this.tag(block, "link");
    },
    parse(xml) {
      const blocks = xml.match(/<item[\s>][\s\S]*?<\/item>/gi) ?? xml.match(/<entry[\s>][\s\S]*?<\/entry>/gi) ?? [];
      return blocks.map((block) => {
        const title = this.tag(block, "title");
        const link = this.link(block);
        const id = this.tag(block, "guid") ?? this.tag(block, "id") ?? link ?? title;
        const date = this.tag(block, "pubDate") ?? this.tag(block, "updated") ?? this.tag(block, "published") ?? this.tag(block, "dc:date");
        const ts = date && !Number.isNaN(Date.parse(date)) ? Date.parse(date) : undefined;
        return { id, title, link, description: this.tag(block, "description") ?? this.tag(block, "summary"), date, ts };
      });
    },
  },
  async run() {
    const xml = await axios(this, { url: this.url, responseType: "text", transformResponse: (d) => d });
    const items = this.parse(String(xml)).filter((i) => i.id);
    const newest = items.sort((a, b) => (b.ts ?? 0) - (a.ts ?? 0)).slice(0, this.maxItems ?? 20);
    for (const item of newest.reverse()) {
      this.$emit(item, { id: item.id, summary: item.title ?? item.link ?? item.id, ...(item.ts ? { ts: item.ts } : {}) });
    }
  },
};
