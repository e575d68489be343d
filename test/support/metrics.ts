/** A Prometheus text page as `{ 'name{labels}': value }` (series without labels under their bare name). */
export async function scrapeMetrics(url: string): Promise<Record<string, number>> {
  const text = await (await fetch(url)).text();
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out[line.slice(0, i)] = Number(line.slice(i + 1));
  }
  return out;
}
