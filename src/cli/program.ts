import { Command } from "commander";
import { softwareVersion } from "../protocol/light.js";
import { registerCtlOptions } from "./ctl/context.js";
import { registerAuditCommand } from "./ctl/audit-command.js";
import { registerModelsCommands } from "./ctl/models-commands.js";
import { registerDemoCommand } from "./demo-command.js";
import { registerServerCommand } from "./server-command.js";
import { registerAgentCommand } from "./agent-command.js";
import { registerGatewayCommand } from "./gateway-command.js";
import { registerSimEngineCommand } from "./sim-engine-command.js";
import { registerLlamaEngineCommand } from "./llama-engine-command.js";
import { registerNodesCommands } from "./ctl/nodes-commands.js";
import { registerTokensCommands } from "./ctl/tokens-commands.js";
import { registerStateCommands } from "./ctl/state-commands.js";
import { registerGatewayKeysCommands } from "./ctl/gateway-keys-commands.js";
import { registerReconcileCommands } from "./ctl/reconcile-commands.js";
import { registerPresetCommands } from "./ctl/presets-commands.js";
import { registerServeCommand } from "./ctl/serve-command.js";
import { registerPullCommands } from "./ctl/pull-command.js";
import { registerVersionCommands } from "./ctl/version-commands.js";
import { registerAdapterCommands } from "./ctl/adapter-commands.js";
import { registerCanaryCommands } from "./ctl/canary-commands.js";
import { registerModelChangeCommands } from "./ctl/model-change-commands.js";
import { registerMirrorCommands } from "./ctl/mirror-command.js";
import { addDryRunOptions } from "./ctl/dry-run-option.js";
import { registerCompletionCommands } from "./completion/completion-command.js";
import { registerServiceCommands } from "./service/service-command.js";

/**
 * The whole command tree, built without running anything: main.ts parses the
 * command line with it, and the generated ctl reference and the shell
 * completion scripts read it.
 */
export function buildProgram(): Command {
  const program = new Command("llmgw")
    .description("a private LLM platform: OpenAI-compatible gateway, control plane, node agent and operator CLI in one program")
    .version(softwareVersion, "-v, --version")
    .showSuggestionAfterError()
    .showHelpAfterError("(run with --help for usage)");
  registerDemoCommand(program);
  registerServerCommand(program);
  registerAgentCommand(program);
  registerGatewayCommand(program);
  const ctl = registerCtlOptions(program.command("ctl").description("operate a running llmgw server (the admin API)"));
  registerModelsCommands(ctl);
  registerAuditCommand(ctl);
  registerNodesCommands(ctl);
  registerTokensCommands(ctl);
  registerGatewayKeysCommands(ctl);
  registerReconcileCommands(ctl);
  registerPresetCommands(ctl);
  registerServeCommand(ctl);
  registerPullCommands(ctl);
  registerVersionCommands(ctl);
  registerAdapterCommands(ctl);
  registerCanaryCommands(ctl);
  registerModelChangeCommands(ctl);
  registerMirrorCommands(ctl);
  registerStateCommands(ctl);
  addDryRunOptions(ctl);
  registerSimEngineCommand(program);
  registerLlamaEngineCommand(program);
  registerCompletionCommands(program);
  registerServiceCommands(program);
  // `llmgw server --version` too: an operator checking one face after an upgrade types its name first.
  for (const face of program.commands) if (["demo", "server", "agent", "gateway", "ctl"].includes(face.name())) face.version(softwareVersion, "--version");
  return program;
}

