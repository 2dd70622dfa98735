import type { Command } from "commander";
import { registerCtlOptions } from "./ctl/context.js";
import { registerAuditCommand } from "./ctl/audit-command.js";
import { registerModelsCommands } from "./ctl/models-commands.js";
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

/** `llmgw ctl` and every command under it. */
export function registerCtlBranch(program: Command): Command {
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
  return ctl;
}
