interface WebCrypto {
  randomUUID?: () => string;
  getRandomValues?: <T extends Uint8Array>(array: T) => T;
}

const webCrypto = (globalThis as { crypto?: WebCrypto }).crypto;

/**
 * A random owner id for one acquisition. Uses the Web Crypto API (global in Node >= 19, Deno, Bun
 * and browsers) rather than `node:crypto`, so the main entry stays browser-safe. Browsers expose
 * `randomUUID` in secure contexts only, hence the fallbacks; owner ids need uniqueness, not secrecy.
 */
export function randomOwnerId(): string {
  if (typeof webCrypto?.randomUUID === 'function') return webCrypto.randomUUID();
  const bytes = new Uint8Array(16);
  if (typeof webCrypto?.getRandomValues === 'function') webCrypto.getRandomValues(bytes);
  else for (let index = 0; index < bytes.length; index++) bytes[index] = Math.floor(Math.random() * 256);
  let id = '';
  for (const byte of bytes) id += byte.toString(16).padStart(2, '0');
  return id;
}
