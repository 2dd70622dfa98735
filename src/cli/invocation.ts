export { asInvoked, printedLlmgwCommand } from "../llmgw-invocation.js";
