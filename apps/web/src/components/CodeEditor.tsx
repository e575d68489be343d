import { useRef } from 'preact/hooks';
import { tokenize } from '../highlight';

/**
 * A textarea over a highlighted copy of its text: typing, selection, undo, find and screen readers
 * all work as in any textarea; the coloured layer below only mirrors it. Tab inserts two spaces;
 * Escape then Tab leaves the editor (keyboard users are never trapped).
 */
export function CodeEditor({ id, value, onInput, label }: { id: string; value: string; onInput: (v: string) => void; label: string }) {
  const pre = useRef<HTMLPreElement>(null);
  const escaped = useRef(false);
  const sync = (t: HTMLTextAreaElement) => {
    if (pre.current) {
      pre.current.scrollTop = t.scrollTop;
      pre.current.scrollLeft = t.scrollLeft;
    }
  };
  return (
    <div class="code-editor">
      <label for={id}>{label}</label>
      <div class="code-editor__area">
        <pre ref={pre} aria-hidden="true" class="code-editor__highlight">
          {tokenize(value).map((t, i) => (t.kind ? <span key={i} class={`tok-${t.kind}`}>{t.text}</span> : t.text))}
          {'\n'}
        </pre>
        <textarea
          id={id}
          spellcheck={false}
          autocapitalize="off"
          autocomplete="off"
          value={value}
          aria-describedby={`${id}-help`}
          onInput={(e) => {
            onInput(e.currentTarget.value);
            sync(e.currentTarget);
          }}
          onScroll={(e) => sync(e.currentTarget)}
          onKeyDown={(e) => {
            if (e.key === 'Escape') {
              escaped.current = true;
              return;
            }
            if (e.key === 'Tab' && !e.shiftKey && !escaped.current) {
              e.preventDefault();
              const t = e.currentTarget;
              const { selectionStart: s, selectionEnd: end } = t;
              t.setRangeText('  ', s, end, 'end');
              onInput(t.value);
            }
            escaped.current = false;
          }}
        />
      </div>
      <p id={`${id}-help`} class="hint">
        JavaScript (CommonJS or ESM). Tab indents; press Escape then Tab to move on.
      </p>
    </div>
  );
}
