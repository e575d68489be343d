/** Splits an event id `<epoch_ms>-<seq>` into its numeric parts; undefined when malformed. */
export function parseEventId(id: string): { ms: number; seq: number } | undefined {
  const m = /^(\d{1,15})-(\d{1,9})$/.exec(id);
  if (!m) return undefined;
  return { ms: Number(m[1]), seq: Number(m[2]) };
}

export const CHANNEL_CLASSES = ['emits', '$errors', '$logs'] as const;
export type ChannelClass = (typeof CHANNEL_CLASSES)[number];

/** Retention is counted per emitter and class: default and custom channels share `emits`. */
export function channelClassOf(name: string): ChannelClass {
  return name === '$errors' || name === '$logs' ? name : 'emits';
}
