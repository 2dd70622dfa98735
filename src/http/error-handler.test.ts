import Fastify from "fastify";
import { describe, expect, it } from "vitest";
import { DomainError } from "../errors/domain-error.js";
import { installErrorHandling } from "./error-handler.js";

describe("error answers", () => {
  it("mask a URL password quoted anywhere in an error's message, hint or details", async () => {
    const app = Fastify();
    installErrorHandling(app);
    app.get("/fails", async () => {
      throw new DomainError(
        "source_unavailable",
        "could not fetch https://robot:msgpass@mirror.example/m/ on node gpu-1",
        "Check DATABASE_URL=postgres://app:hint@pass@db/app",
        [{ where: "profiles[0].source", message: "https://robot:detailpass@mirror.example/m/ answered 401" }],
      );
    });
    const response = await app.inject({ method: "GET", url: "/fails" });
    await app.close();
    expect(response.statusCode).toBe(502);
    for (const secret of ["msgpass", "hint@pass", "pass@db", "detailpass"]) expect(response.body).not.toContain(secret);
    expect(response.json().error).toMatchObject({
      code: "source_unavailable",
      message: "could not fetch https://robot:***@mirror.example/m/ on node gpu-1",
      hint: "Check DATABASE_URL=postgres://app:***@db/app",
    });
  });
});
