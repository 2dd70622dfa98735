import { Help, type Command, type Option } from "commander";

/**
 * What the ctl reference and the completion scripts read of commander's
 * command tree: only the visible parts (no hidden commands or options, no
 * implicit `help` command), in the order they were registered.
 */
const help = new Help();

export function visibleSubcommands(command: Command): Command[] {
  return help.visibleCommands(command).filter((sub) => sub.name() !== "help");
}

export function visibleOptions(command: Command): Option[] {
  return help.visibleOptions(command).filter((option) => option.long !== "--help");
}

/** The words that name a command from the root: ["llmgw", "ctl", "model", "add"]. */
export function commandPath(command: Command): string[] {
  const names: string[] = [];
  for (let at: Command | null = command; at !== null; at = at.parent) names.unshift(at.name());
  return names;
}

/** Every command under (and including) the root, depth first in registration order. */
export function allCommands(root: Command): Command[] {
  return [root, ...visibleSubcommands(root).flatMap((sub) => allCommands(sub))];
}
