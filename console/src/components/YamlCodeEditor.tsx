import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
import { yaml } from "@codemirror/lang-yaml";
import { bracketMatching, defaultHighlightStyle, indentOnInput, syntaxHighlighting } from "@codemirror/language";
import { lintGutter, lintKeymap, setDiagnostics, type Diagnostic } from "@codemirror/lint";
import { EditorState, type Text } from "@codemirror/state";
import { EditorView, drawSelection, highlightActiveLine, highlightActiveLineGutter, keymap, lineNumbers } from "@codemirror/view";
import { useEffect, useRef } from "react";
import type { PlacedError } from "../yaml-errors.ts";

/**
 * The server's and the parser's errors as diagnostics: each from the line and
 * column it names to the end of that line (a field's value, not the whole
 * block below it), clamped to the text so a stale place never throws.
 */
function diagnosticsOf(document: Text, errors: readonly PlacedError[]): Diagnostic[] {
  return errors.map((error) => {
    const line = document.line(Math.min(Math.max(error.line, 1), document.lines));
    const from = Math.min(line.from + Math.max(error.column, 1) - 1, line.to);
    return { from, to: line.to, severity: "error", source: error.where, message: error.message };
  });
}

/**
 * No `indentWithTab` on purpose: Tab and Shift-Tab move the focus on (to the
 * dialog's buttons) as in any field, so a keyboard user is never trapped in
 * the editor; indentation is typed as spaces, and Enter keeps it.
 */
const keys = keymap.of([...defaultKeymap, ...historyKeymap, ...lintKeymap]);

/**
 * CodeMirror writes its own CSS into the page at run time. The console's
 * Content-Security-Policy already allows inline styles (`style-src 'self'
 * 'unsafe-inline'`, for Mantine's), so no `EditorView.cspNonce` is set: a
 * nonce in style-src would make the browser ignore 'unsafe-inline' and so
 * block Mantine's own style tags, and styles cannot run script either way.
 */
const look = EditorView.theme({
  "&": { fontSize: "13px", border: "1px solid var(--mantine-color-default-border)", borderRadius: "var(--mantine-radius-sm)" },
  "&.cm-focused": { outline: "2px solid var(--mantine-primary-color-filled)", outlineOffset: "1px" },
  ".cm-scroller": { fontFamily: "var(--mantine-font-family-monospace)", minHeight: "14em" },
});

export interface YamlCodeEditorProps {
  readonly initial: string;
  readonly label: string;
  readonly onChange: (text: string) => void;
  /** The errors found in `checkedText`: shown only while the editor holds that text, so they never land on lines typed since. */
  readonly errors: readonly PlacedError[];
  readonly checkedText: string;
}

/** CodeMirror mounted in a div: YAML highlighting, undo history, and the errors underlined with a marker in the gutter. */
export default function YamlCodeEditor({ initial, label, onChange, errors, checkedText }: YamlCodeEditorProps) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const changed = useRef(onChange);
  changed.current = onChange;

  useEffect(() => {
    if (host.current === null) return;
    const editor = new EditorView({
      parent: host.current,
      state: EditorState.create({
        doc: initial,
        extensions: [
          lineNumbers(),
          highlightActiveLineGutter(),
          highlightActiveLine(),
          drawSelection(),
          history(),
          indentOnInput(),
          bracketMatching(),
          yaml(),
          syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
          lintGutter(),
          keys,
          look,
          EditorView.contentAttributes.of({ "aria-label": label }),
          EditorView.updateListener.of((update) => {
            if (update.docChanged) changed.current(update.state.doc.toString());
          }),
        ],
      }),
    });
    view.current = editor;
    return () => {
      editor.destroy();
      view.current = null;
    };
    // The editor owns its text once mounted: a new `initial` is a new editor (the dialog remounts it), not a reset under the cursor.
  }, []);

  useEffect(() => {
    const editor = view.current;
    if (editor === null || editor.state.doc.toString() !== checkedText) return;
    editor.dispatch(setDiagnostics(editor.state, diagnosticsOf(editor.state.doc, errors)));
  }, [errors, checkedText]);

  return <div ref={host} />;
}
