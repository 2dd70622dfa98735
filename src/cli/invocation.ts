/**
 * How the person at the terminal started llmgw, so that every command we
 * print as a next step runs as printed. In a clone, `npm ci` does not put
 * `llmgw` on the PATH: started through `npx llmgw` (or `npm exec llmgw`),
 * a hint that says bare `llmgw ctl ...` fails with "command not found".
 * npm marks a process it starts through exec with npm_command=exec.
 */
export function printedLlmgwCommand(environment: NodeJS.ProcessEnv = process.env): string {
  return environment.npm_command === "exec" ? "npx llmgw" : "llmgw";
}

/**
 * Rewrites the commands quoted in a message (`` `llmgw ctl nodes` ``) to the
 * way this CLI was started. Hints written by the server name bare `llmgw`
 * (it cannot know how its client was started); the CLI prints them as the
 * user can run them.
 */
export function asInvoked(text: string, environment: NodeJS.ProcessEnv = process.env): string {
  const command = printedLlmgwCommand(environment);
  return command === "llmgw" ? text : text.replace(/`llmgw /g, `\`${command} `);
}
