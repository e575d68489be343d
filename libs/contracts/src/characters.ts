/**
 * Characters of `text` as JSON Schema's maxLength (Ajv) and Postgres's varchar(n) count them: a surrogate pair (an
 * emoji) is one character, a lone surrogate one too.
 */
export function characterCount(text: string): number {
  let n = text.length;
  for (let i = 0; i < text.length - 1; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

/** Whether `text` has more than `max` characters as characterCount counts them (counted only when its length says it may). */
export function longerThan(text: string, max: number): boolean {
  return text.length > max && characterCount(text) > max;
}
