import { Command } from "commander";
import { softwareVersion } from "../protocol/light.js";
import { registerCtlBranch } from "./ctl-branch.js";
import type { processCommands } from "./process-commands.js";

/** The top of the tree: its name, description and --version, with no command yet. */
export function programRoot(): Command {
  return new Command("llmgw")
    .description("a private LLM platform: OpenAI-compatible gateway, control plane, node agent and operator CLI in one program")
    .version(softwareVersion, "-v, --version")
    .showSuggestionAfterError()
    .showHelpAfterError("(run with --help for usage)");
}

/**
 * The tree from its parts: `processes` absent builds the ctl branch alone,
 * which is all a `llmgw ctl …` command line runs (main.ts then never loads the
 * processes' command modules: an operator's first keystroke must not pay for
 * them).
 */
export function assembleProgram(program: Command, processes: typeof processCommands | undefined): Command {
  processes?.beforeCtl(program);
  registerCtlBranch(program);
  processes?.afterCtl(program);
  // `llmgw server --version` too: an operator checking one face after an upgrade types its name first.
  for (const face of program.commands) if (["demo", "server", "agent", "gateway", "ctl"].includes(face.name())) face.version(softwareVersion, "--version");
  return program;
}
