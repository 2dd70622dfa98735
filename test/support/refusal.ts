import { DomainError } from "../../src/errors/domain-error.js";

/** The DomainError a call is refused with; fails the test when it succeeds or throws anything else. */
export async function refusal(run: () => Promise<unknown>): Promise<DomainError> {
  try {
    await run();
  } catch (error) {
    if (error instanceof DomainError) return error;
    throw error;
  }
  throw new Error("expected the call to be refused with a DomainError");
}

/** The same, for a call that does not return a promise (parsing a file, loading server.yaml). */
export function refusalOf(run: () => unknown): DomainError {
  return thrownBy(DomainError, run);
}

/** The error of class `kind` a synchronous call throws; fails the test when it succeeds or throws anything else. */
export function thrownBy<E extends Error>(kind: abstract new (...args: never[]) => E, run: () => unknown): E {
  try {
    run();
  } catch (error) {
    if (error instanceof kind) return error;
    throw error;
  }
  throw new Error(`expected the call to be refused with a ${kind.name}`);
}
