import { describe, expect, it } from "vitest";
import { asInvoked, printedLlmgwCommand } from "./invocation.js";

describe("printedLlmgwCommand", () => {
  it("is npx llmgw when npm started it through exec (npx llmgw, npm exec llmgw)", () => {
    expect(printedLlmgwCommand({ npm_command: "exec" })).toBe("npx llmgw");
  });

  it("is bare llmgw otherwise (a global install, npm link, or npm test's child processes)", () => {
    expect(printedLlmgwCommand({})).toBe("llmgw");
    expect(printedLlmgwCommand({ npm_command: "test" })).toBe("llmgw");
  });
});

describe("asInvoked", () => {
  const hint = "List nodes with `llmgw ctl nodes`; a new node joins with `llmgw agent --token`.";

  it("rewrites every quoted llmgw command for npx", () => {
    expect(asInvoked(hint, { npm_command: "exec" })).toBe("List nodes with `npx llmgw ctl nodes`; a new node joins with `npx llmgw agent --token`.");
  });

  it("leaves the text alone when llmgw is on the PATH", () => {
    expect(asInvoked(hint, {})).toBe(hint);
  });

  it("leaves llmgw alone where it is not a quoted command", () => {
    expect(asInvoked("the llmgw server at http://x answered", { npm_command: "exec" })).toBe("the llmgw server at http://x answered");
  });
});
