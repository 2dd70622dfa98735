/**
 * A path or value as one shell word, so a command we print runs as printed
 * when pasted: quoted only when it holds characters the shell would split on
 * or expand (a data dir under "My Files" would otherwise be two arguments).
 */
export function shellWord(text: string): string {
  if (/^[\w@%+=:,./-]+$/.test(text)) return text;
  return `'${text.replace(/'/g, `'\\''`)}'`;
}
