import type { Command } from "commander";
import { describe, expect, it } from "vitest";
import { buildProgram } from "./program.js";

function everyCommand(command: Command): Command[] {
  return [command, ...command.commands.flatMap(everyCommand)];
}

describe("every option's help", () => {
  it("says its default once: in its own words or commander's, not both", () => {
    const twice: string[] = [];
    for (const command of everyCommand(buildProgram())) {
      for (const option of command.options) {
        if (option.defaultValue !== undefined && /\(default|default:|defaults to/i.test(option.description) && option.defaultValueDescription === undefined) {
          twice.push(`${command.name()} ${option.flags}: ${option.description}`);
        }
      }
    }
    expect(twice).toEqual([]);
  });
});
