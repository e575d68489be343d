/** The part of js-yaml the CLI uses (the package ships no types). */
declare module 'js-yaml' {
  export function load(text: string): unknown;
}
