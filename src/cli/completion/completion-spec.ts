import type { Command } from "commander";
import { allCommands, commandPath, visibleOptions, visibleSubcommands } from "../reference/command-tree.js";

/** What a shell needs to know of one command to complete the words after it. */
export interface CompletionEntry {
  /** The words after `llmgw` that name it, space-joined ("" for llmgw itself, "ctl model" ...). */
  readonly path: string;
  readonly subcommands: readonly string[];
  /** Every spelling of its options (`-f`, `--follow`). */
  readonly options: readonly string[];
  /** The options whose next word is their value, so it is not read as a subcommand. */
  readonly valueOptions: readonly string[];
  /** Its first argument is a model's name, completed from the server. */
  readonly modelArgument: boolean;
  /** Options whose value is a model's name (`--model`). */
  readonly modelOptions: readonly string[];
  /** Its first argument is a shipped preset's name (`ctl model add PRESET`), completed offline from the presets. */
  readonly presetArgument: boolean;
}

/**
 * Whether a command's first argument names a catalog model: an argument
 * called `model`, or the `name` of a command that acts on a model
 * (`ctl model show NAME`, `ctl scale NAME`).
 */
function firstArgumentIsModel(command: Command): boolean {
  const first = command.registeredArguments[0]?.name();
  if (first === "model") return true;
  const path = commandPath(command).slice(1).join(" ");
  return first === "name" && (path.startsWith("ctl model ") || path === "ctl scale");
}

export function completionSpec(root: Command): CompletionEntry[] {
  return allCommands(root).map((command) => {
    const options = visibleOptions(command);
    const spellings = (flag: { short?: string | undefined; long?: string | undefined }) => [flag.short, flag.long].filter((name): name is string => name !== undefined);
    return {
      path: commandPath(command).slice(1).join(" "),
      subcommands: visibleSubcommands(command).map((sub) => sub.name()),
      options: options.flatMap(spellings),
      valueOptions: options.filter((option) => option.required || option.optional).flatMap(spellings),
      modelArgument: firstArgumentIsModel(command),
      modelOptions: options.filter((option) => option.long === "--model").flatMap(spellings),
      presetArgument: command.registeredArguments[0]?.name() === "preset",
    };
  });
}
