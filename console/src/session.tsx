import { createContext, useContext } from "react";
import type { SessionView } from "./types.ts";

export const SessionContext = createContext<SessionView["token"] | null>(null);

export interface ChangePermission {
  readonly allowed: boolean;
  /** Why not, in words shown beside every disabled change. */
  readonly reason: string | null;
}

/** A read-only token sees everything and changes nothing: every change control asks this. */
export function useChangePermission(): ChangePermission {
  const session = useContext(SessionContext);
  if (session?.role === "admin") return { allowed: true, reason: null };
  return { allowed: false, reason: `The token "${session?.name ?? "?"}" is read-only: changes need an admin token (llmgw ctl token create NAME --role admin).` };
}

export function useSession(): SessionView["token"] | null {
  return useContext(SessionContext);
}
