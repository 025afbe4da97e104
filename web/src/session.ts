// Credentials for this browser tab, held in memory only: never in
// localStorage, sessionStorage, cookies or the URL. A reload forgets them,
// which is the point: the admin key is entered once per page session.

let apiKey = '';
let adminKey = '';
const listeners = new Set<() => void>();

export function getApiKey(): string { return apiKey; }
export function setApiKey(k: string): void { apiKey = k.trim(); listeners.forEach(f => f()); }
export function getAdminKey(): string { return adminKey; }
export function setAdminKey(k: string): void { adminKey = k.trim(); listeners.forEach(f => f()); }
export function onKeysChanged(f: () => void): () => void { listeners.add(f); return () => listeners.delete(f); }
