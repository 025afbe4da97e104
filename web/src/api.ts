// Calls to the server this page came from (relative URLs only: the page's
// Content-Security-Policy allows no other origin), with the in-memory keys.
import { getAdminKey, getApiKey } from './session';

export class ApiError extends Error {
  constructor(public status: number, message: string, public code?: string) { super(message); }
}

function headers(key: string, json: boolean): Record<string, string> {
  const hd: Record<string, string> = {};
  if (key) hd.authorization = `Bearer ${key}`;
  if (json) hd['content-type'] = 'application/json';
  return hd;
}

// The OpenAI error object's message, else the status line.
async function errorOf(r: Response): Promise<ApiError> {
  let message = `HTTP ${r.status}`;
  let code: string | undefined;
  try {
    const body = await r.json();
    if (body?.error?.message) { message = `HTTP ${r.status}: ${body.error.message}`; code = body.error.code ?? undefined; }
  } catch { /* not JSON */ }
  return new ApiError(r.status, message, code);
}

async function call<T>(key: string, method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  let r: Response;
  try {
    r = await fetch(path, { method, headers: headers(key, body !== undefined),
                            body: body === undefined ? undefined : JSON.stringify(body), signal, cache: 'no-store' });
  } catch (e) {
    throw new ApiError(0, `The server did not answer (${(e as Error).message}).`);
  }
  if (!r.ok) throw await errorOf(r);
  const type = r.headers.get('content-type') ?? '';
  return (type.includes('json') ? await r.json() : await r.text()) as T;
}

export const api = {
  get: <T>(path: string, signal?: AbortSignal) => call<T>(getApiKey(), 'GET', path, undefined, signal),
  post: <T>(path: string, body: unknown, signal?: AbortSignal) => call<T>(getApiKey(), 'POST', path, body, signal),
};

export const admin = {
  get: <T>(path: string) => call<T>(getAdminKey(), 'GET', path),
  post: <T>(path: string, body: unknown = {}) => call<T>(getAdminKey(), 'POST', path, body),
  put: <T>(path: string, body: unknown) => call<T>(getAdminKey(), 'PUT', path, body),
  patch: <T>(path: string, body: unknown) => call<T>(getAdminKey(), 'PATCH', path, body),
  del: <T>(path: string) => call<T>(getAdminKey(), 'DELETE', path),
};

// A streamed POST: the raw Response (the caller reads its SSE body).
export async function postStream(path: string, body: unknown, signal: AbortSignal): Promise<Response> {
  const r = await fetch(path, { method: 'POST', headers: headers(getApiKey(), true), body: JSON.stringify(body), signal,
                                cache: 'no-store' });
  if (!r.ok) throw await errorOf(r);
  return r;
}
