import { Argument, type Command } from "commander";
import type { ModelView } from "../../protocol/views.js";
import { apiClient, type CtlOptions } from "../ctl/context.js";
import { completionScript, completionShells, type CompletionShell } from "./completion-scripts.js";
import { completionSpec } from "./completion-spec.js";

/** A TAB must not hang on a server that does not answer: after this, nothing is offered. */
const modelNamesTimeoutMs = 2_000;

/**
 * Model names and aliases from the server ctl would use (a TAB's line has no
 * flags: its environment and token file only); none when it does not answer.
 */
export async function modelNamesForCompletion(options: CtlOptions = {}): Promise<string[]> {
  const answer = apiClient(options).get<{ models: Pick<ModelView, "name" | "aliases">[] }>("/api/v1/models");
  const timeout = new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), modelNamesTimeoutMs).unref());
  const listed = await Promise.race([answer.catch(() => undefined), timeout]);
  return (listed?.models ?? []).flatMap((model) => [model.name, ...model.aliases]);
}

/**
 * `llmgw completion SHELL` prints a script made from the command tree it is
 * registered on (the root); the hidden `llmgw __complete models` is what the
 * scripts call for the one thing the tree cannot know, the catalog's names.
 */
export function registerCompletionCommands(program: Command): void {
  program
    .command("completion")
    .description("print a shell completion script for llmgw (bash: source <(llmgw completion bash); fish: llmgw completion fish | source)")
    .addArgument(new Argument("<shell>", "the shell the script is for").choices(completionShells))
    .action(async (shell: CompletionShell) => {
      const { shippedPresets } = await import("../../catalog/presets/shipped-presets.js");
      process.stdout.write(completionScript(shell, completionSpec(program), { presets: shippedPresets().map((preset) => preset.name) }));
    });
  program
    .command("__complete", { hidden: true })
    .description("candidates for the completion scripts")
    .argument("<what>", "models")
    .action(async (what: string) => {
      const names = what === "models" ? await modelNamesForCompletion() : [];
      if (names.length > 0) process.stdout.write(`${names.join("\n")}\n`);
      // A socket left open by a request that timed out must not keep the shell waiting.
      process.exit(0);
    });
}
