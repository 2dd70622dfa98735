import { describe, expect, it } from "vitest";
import { RemoteError } from "../client/api-client.js";
import { DomainError } from "../errors/domain-error.js";
import { describeFailure } from "./report-failure.js";

describe("how ctl prints a refusal", () => {
  it("prints a single detail under its place, and the hint last", () => {
    const error = new RemoteError(
      "source_unreadable",
      "bar-404: a source does not answer as a model: bar-404.profiles[0].source",
      "Fix the source; or add it unread with `ctl model add --no-source-check`.",
      [{ where: "bar-404.profiles[0].source", message: "http://127.0.0.1:9/none.gguf: could not connect (bad port)" }],
      400,
    );
    const lines = describeFailure(error).split("\n");
    expect(lines[0]).toBe("error: bar-404: a source does not answer as a model: bar-404.profiles[0].source");
    expect(lines[1]).toBe("  - bar-404.profiles[0].source: http://127.0.0.1:9/none.gguf: could not connect (bad port)");
    expect(lines.at(-1)).toContain("--no-source-check");
  });

  it("prints every detail of several, each under its place", () => {
    const error = new DomainError("invalid_input", "two problems", "Correct each place listed.", [
      { where: "a", message: "first" },
      { where: "b", message: "second" },
    ]);
    expect(describeFailure(error)).toBe("error: two problems\n  - a: first\n  - b: second\nCorrect each place listed.");
  });

  it("does not repeat a detail the message already states", () => {
    const error = new DomainError("invalid_input", "profiles[0].engine: required", "Correct that place.", [{ where: "profiles[0].engine", message: "required" }]);
    expect(describeFailure(error)).toBe("error: profiles[0].engine: required\nCorrect that place.");
  });
});
