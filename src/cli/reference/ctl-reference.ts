import type { Argument, Command, Option } from "commander";
import { allCommands, commandPath, visibleOptions, visibleSubcommands } from "./command-tree.js";

/** A table cell: pipes escaped and line breaks folded, so a description never breaks the table. */
function cell(text: string): string {
  return text.replace(/\|/g, "\\|").replace(/\s*\n\s*/g, " ").trim();
}

function code(text: string): string {
  return `\`${text.replace(/`/g, "'")}\``;
}

function defaultOf(value: unknown, description: string | undefined): string {
  if (description !== undefined) return description;
  if (value === undefined) return "";
  return code(typeof value === "string" ? value : JSON.stringify(value));
}

function argumentRow(argument: Argument): string {
  const name = `${argument.required ? "<" : "["}${argument.name()}${argument.variadic ? "..." : ""}${argument.required ? ">" : "]"}`;
  const choices = argument.argChoices ? ` (one of ${argument.argChoices.map(code).join(", ")})` : "";
  return `| ${code(name)} | ${cell(argument.description + choices)} | ${cell(defaultOf(argument.defaultValue, argument.defaultValueDescription))} |`;
}

function optionRow(option: Option): string {
  const choices = option.argChoices ? ` (one of ${option.argChoices.map(code).join(", ")})` : "";
  const environment = option.envVar ? ` (env ${code(option.envVar)})` : "";
  const mandatory = option.mandatory ? " (required)" : "";
  return `| ${code(option.flags)} | ${cell(option.description + choices + environment + mandatory)} | ${cell(defaultOf(option.defaultValue, option.defaultValueDescription))} |`;
}

function commandSection(command: Command): string[] {
  const path = commandPath(command);
  const lines = [`${"#".repeat(Math.min(path.length + 1, 6))} ${path.join(" ")}`, ""];
  if (command.description()) lines.push(cell(command.description()), "");
  const aliases = command.aliases();
  lines.push("```", `${path.join(" ")} ${command.usage()}`.trimEnd(), "```", "");
  if (aliases.length > 0) lines.push(`Also: ${aliases.map((alias) => code([...path.slice(0, -1), alias].join(" "))).join(", ")}.`, "");
  const subcommands = visibleSubcommands(command);
  if (subcommands.length > 0) {
    lines.push("| command | what it does |", "| --- | --- |");
    for (const sub of subcommands) lines.push(`| [${code(sub.name())}](#${anchor(commandPath(sub).join(" "))}) | ${cell(sub.summary() || sub.description())} |`);
    lines.push("");
  }
  if (command.registeredArguments.length > 0) {
    lines.push("| argument | meaning | default |", "| --- | --- | --- |", ...command.registeredArguments.map(argumentRow), "");
  }
  const options = visibleOptions(command);
  if (options.length > 0) lines.push("| option | meaning | default |", "| --- | --- | --- |", ...options.map(optionRow), "");
  return lines;
}

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens. */
export function anchor(heading: string): string {
  return heading.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-");
}

/**
 * The reference of every llmgw command, argument and option, written from
 * the same commander tree that parses the command line, so it says what the
 * program does rather than what someone remembered to write.
 */
export function renderCommandReference(root: Command): string {
  const lines = [
    "# Command reference",
    "",
    "Generated from the command tree by `npm run docs`; do not edit by hand (a test fails when it is stale).",
    "The guide, by task, is [docs/ctl.md](../ctl.md). Options of a parent command (`llmgw ctl --server`, `--token`, `--data-dir`) apply to every command under it.",
    "",
    ...allCommands(root).flatMap(commandSection),
  ];
  return `${lines.join("\n").replace(/\n{3,}/g, "\n\n").trimEnd()}\n`;
}
