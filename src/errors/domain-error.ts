import type { ErrorCode } from "./codes.js";

/** One problem inside a larger failure, e.g. one field of a rejected model. */
export interface ErrorDetail {
  /** Where: a file position (`server.yaml:12:5`) and/or a path (`models[2].profiles[0].gpus`). */
  readonly where: string;
  readonly message: string;
}

/**
 * A failure a user can act on. It says what went wrong (`message`), what to
 * do about it (`hint`), and optionally each place involved (`details`), so
 * the person at the terminal never has to read a stack trace.
 */
export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly hint: string,
    readonly details: readonly ErrorDetail[] = [],
  ) {
    super(message);
    this.name = "DomainError";
  }

  /** The wire shape shared by the admin API, the CLI and the console. */
  toBody(): ErrorBody {
    return {
      error: {
        code: this.code,
        message: this.message,
        hint: this.hint,
        ...(this.details.length > 0 ? { details: [...this.details] } : {}),
      },
    };
  }
}

export interface ErrorBody {
  error: {
    code: ErrorCode;
    message: string;
    hint: string;
    details?: ErrorDetail[];
  };
}

export function isDomainError(error: unknown): error is DomainError {
  return error instanceof DomainError;
}
