/** What an interactive bash or zsh makes of a command line pasted as printed. */
export interface PastedLine {
  /** The words the command receives, quotes removed (meaningful when there are no hazards). */
  readonly words: string[];
  /** Why the line would not run as printed in one of the two shells; empty when it pastes cleanly. */
  readonly hazards: string[];
}

const operators = new Set([";", "&", "|", "<", ">", "(", ")"]);

/**
 * Reads a command line (continuation lines joined by a trailing backslash) the
 * way both shells do at a prompt, with zsh's defaults: no
 * `interactivecomments` (a `#` starting a word is an argument, not a
 * comment), `nomatch` (an unquoted glob that matches nothing stops the line
 * with "no matches found"), `equals` (`=word` becomes the path of the
 * command `word`), and both shells' history expansion of `!` outside single
 * quotes. `$` and backquotes are counted as hazards too: a printed line
 * carries its values itself, rather than depending on the reader's shell.
 */
export function readAsPasted(line: string): PastedLine {
  const words: string[] = [];
  const hazards: string[] = [];
  let word: string | undefined;
  const add = (text: string) => (word = (word ?? "") + text);
  const end = () => {
    if (word !== undefined) words.push(word);
    word = undefined;
  };
  for (let index = 0; index < line.length; index += 1) {
    const character = line.charAt(index);
    if (character === "\\") {
      index += 1;
      if (index >= line.length) hazards.push("a backslash ends the line with no line after it");
      else if (line.charAt(index) === "\n") end();
      else add(line.charAt(index));
    } else if (character === " " || character === "\t" || character === "\n") {
      end();
    } else if (operators.has(character)) {
      end();
    } else if (character === "'") {
      const close = line.indexOf("'", index + 1);
      if (close < 0) {
        hazards.push("a ' is never closed: the shell waits for more");
        break;
      }
      add(line.slice(index + 1, close));
      index = close;
    } else if (character === '"') {
      let text = "";
      let closed = false;
      for (index += 1; index < line.length; index += 1) {
        const inside = line.charAt(index);
        if (inside === '"') {
          closed = true;
          break;
        }
        if (inside === "\\" && '$`"\\\n'.includes(line.charAt(index + 1))) {
          index += 1;
          if (line.charAt(index) !== "\n") text += line.charAt(index);
          continue;
        }
        if (inside === "!") hazards.push(`"!" inside double quotes: history expansion in bash and zsh`);
        if (inside === "$" || inside === "`") hazards.push(`"${inside}" inside double quotes: an expansion`);
        text += inside;
      }
      if (!closed) {
        hazards.push('a " is never closed: the shell waits for more');
        break;
      }
      add(text);
    } else {
      const startsWord = word === undefined;
      if (character === "#" && startsWord) hazards.push(`"#" starts a word: zsh without interactivecomments passes it on as an argument`);
      if (character === "=" && startsWord) hazards.push(`"=" starts a word: zsh replaces =WORD with the path of the command WORD`);
      if ("*?[".includes(character)) hazards.push(`unquoted "${character}": a glob, which zsh refuses with "no matches found" when nothing matches`);
      if (character === "!") hazards.push(`unquoted "!": history expansion in bash and zsh`);
      if (character === "$" || character === "`") hazards.push(`unquoted "${character}": an expansion`);
      add(character);
    }
  }
  end();
  return { words, hazards };
}
