import { describe, expect, it } from "vitest";
import { bearerToken } from "./bearer-token.js";

describe("bearerToken", () => {
  it("reads the scheme in any case and the token with spaces around it", () => {
    expect(["Bearer abc", "bearer abc", "BEARER  abc ", " Bearer\tabc"].map(bearerToken)).toEqual(["abc", "abc", "abc", "abc"]);
  });

  it("finds no token in another scheme, an empty header, two words, or a repeated header", () => {
    expect(["Basic abc", "Bearer", "Bearer ", "", "Bearer a b", "Bearerabc"].map(bearerToken)).toEqual([undefined, undefined, undefined, undefined, undefined, undefined]);
    expect(bearerToken(["Bearer a", "Bearer b"])).toBeUndefined();
    expect(bearerToken(undefined)).toBeUndefined();
  });
});
