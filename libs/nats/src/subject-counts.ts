/** A stream's messages per subject (`streams.info` with a subjects filter) summed by the subject's last token: per source, workflow or webhook id. */
export function subjectCounts(subjects: Record<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [subject, count] of Object.entries(subjects)) {
    const id = subject.slice(subject.lastIndexOf('.') + 1);
    out.set(id, (out.get(id) ?? 0) + count);
  }
  return out;
}
