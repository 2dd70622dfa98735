/**
 * How the person at the terminal started llmgw, so that every command we
 * print as a next step runs as printed. In a clone, `npm ci` does not put
 * `llmgw` on the PATH: started through `npx llmgw` (or `npm exec llmgw`),
 * a hint that says bare `llmgw ctl ...` fails with "command not found".
 * npm marks a process it starts through exec with npm_command=exec. At the
 * root of src/: the CLI's output and the gateway's answers both use it.
 */
export function printedLlmgwCommand(environment: NodeJS.ProcessEnv = process.env): string {
  return environment.npm_command === "exec" ? "npx llmgw" : "llmgw";
}

/**
 * Rewrites the commands quoted in a message (`` `llmgw ctl nodes` ``) to the
 * way this process was started. Hints are written naming bare `llmgw`; they
 * are printed, or answered by a gateway started through npx, as the person
 * can run them.
 */
export function asInvoked(text: string, environment: NodeJS.ProcessEnv = process.env): string {
  const command = printedLlmgwCommand(environment);
  return command === "llmgw" ? text : text.replace(/`llmgw /g, `\`${command} `);
}
