/** Who made a change: the admin token's name, and the person the CLI says is at the terminal (the sudo user rather than root). */
export interface Actor {
  readonly token: string;
  readonly user: string | null;
}
