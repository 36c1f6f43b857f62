// Shared UI state: who is signed in, the latest data from the API, and navigation.
import { createContext } from 'preact';
import type { Job, NodeView, Tenant, UsageHistory } from './api';

export interface Data {
  nodes: NodeView[] | null;
  jobs: Job[] | null;
  history: UsageHistory | null;
  tenants: Tenant[] | null;  // admin: all; a tenant: only itself
  updated: number;           // Date.now() of the last complete poll
}

export interface Ctx {
  token: string;
  me: Tenant;
  data: Data;
  navigate: (path: string) => void;
  refresh: () => void;
  // Runs an API action, shows its error (or `done`) as a message, and polls again.
  act: (what: string, fn: () => Promise<unknown>, done?: string) => Promise<boolean>;
}

export const AppContext = createContext<Ctx>(null as unknown as Ctx);
