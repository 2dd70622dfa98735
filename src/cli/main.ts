import { Command, CommanderError } from "commander";
import { softwareVersion } from "../protocol/api-version.js";
import { DomainError } from "../errors/domain-error.js";
import { RemoteError } from "./api-client.js";
import { asInvoked } from "./invocation.js";
import { registerCtlOptions } from "./ctl/context.js";
import { registerAuditCommand } from "./ctl/audit-command.js";
import { registerModelsCommands } from "./ctl/models-commands.js";
import { registerDemoCommand } from "./demo-command.js";
import { registerServerCommand } from "./server-command.js";
import { registerAgentCommand } from "./agent-command.js";
import { registerGatewayCommand } from "./gateway-command.js";
import { registerSimEngineCommand } from "./sim-engine-command.js";
import { registerNodesCommands } from "./ctl/nodes-commands.js";
import { registerTokensCommands } from "./ctl/tokens-commands.js";
import { registerGatewayKeysCommands } from "./ctl/gateway-keys-commands.js";
import { registerReconcileCommands } from "./ctl/reconcile-commands.js";
import { registerPresetCommands } from "./ctl/presets-commands.js";
import { registerServeCommand } from "./ctl/serve-command.js";
import { registerPullCommands } from "./ctl/pull-command.js";
import { registerVersionCommands } from "./ctl/version-commands.js";
import { registerAdapterCommands } from "./ctl/adapter-commands.js";
import { registerCanaryCommands } from "./ctl/canary-commands.js";
import { registerModelChangeCommands } from "./ctl/model-change-commands.js";

function buildProgram(): Command {
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
  registerSimEngineCommand(program);
  return program;
}

/** Prints a failure for the person at the terminal: what happened, then what to do, then each place involved. */
function report(error: unknown): number {
  if (error instanceof DomainError || error instanceof RemoteError) {
    const lines = [`error: ${error.message}`];
    const details = error.details.length > 1 ? error.details : [];
    for (const detail of details) lines.push(`  - ${detail.where}: ${detail.message}`);
    if (error.hint) lines.push(error.hint);
    process.stderr.write(`${asInvoked(lines.join("\n"))}\n`);
    return 1;
  }
  if (error instanceof CommanderError) return error.exitCode;
  process.stderr.write(`error: ${(error as Error).message ?? String(error)}\nThis is a bug in llmgw; the stack below helps to report it.\n${(error as Error).stack ?? ""}\n`);
  return 70;
}

buildProgram()
  .parseAsync(process.argv)
  .catch((error: unknown) => {
    process.exitCode = report(error);
  });
