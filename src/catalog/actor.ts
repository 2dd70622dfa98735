/** Who made a change: the admin token's name, and the person the CLI says is at the terminal (the sudo user rather than root). */
export interface Actor {
  readonly token: string;
  readonly user: string | null;
}

/** The actor as events and messages name it: "admin (alice)", or the token's name alone. */
export function describeActor(actor: Actor): string {
  return actor.user ? `${actor.token} (${actor.user})` : actor.token;
}
