import type { Command } from "commander";
import { registerDemoCommand } from "./demo-command.js";
import { registerServerCommand } from "./server-command.js";
import { registerAgentCommand } from "./agent-command.js";
import { registerGatewayCommand } from "./gateway-command.js";
import { registerSimEngineCommand } from "./sim-engine-command.js";
import { registerLlamaEngineCommand } from "./llama-engine-command.js";
import { registerCompletionCommands } from "./completion/completion-command.js";
import { registerServiceCommands } from "./service/service-command.js";

/** The commands that run a process (and the tools beside them), in the order help lists them: four before ctl, the rest after. */
export const processCommands = {
  beforeCtl(program: Command): void {
    registerDemoCommand(program);
    registerServerCommand(program);
    registerAgentCommand(program);
    registerGatewayCommand(program);
  },
  afterCtl(program: Command): void {
    registerSimEngineCommand(program);
    registerLlamaEngineCommand(program);
    registerCompletionCommands(program);
    registerServiceCommands(program);
  },
};
