/**
 * A word as a POSIX shell reads it back unchanged, for commands we print for
 * someone to paste: a path with a space or a quote in it (a --data-dir under
 * "Application Support") would otherwise split into two arguments. Plain
 * words stay bare, so the usual line reads as a person would type it; but
 * not one starting with "=", which zsh replaces with the path of a command.
 */
export function quoteForShell(text: string): string {
  return /^[A-Za-z0-9_./:@%+,-][A-Za-z0-9_./:@%+=,-]*$/.test(text) ? text : `'${text.replace(/'/g, "'\\''")}'`;
}
