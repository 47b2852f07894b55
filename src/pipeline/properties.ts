/**
 * A typed key for {@link ResilienceProperties}. Keys compare by identity, so two keys with the
 * same name never collide.
 *
 * @example
 * const TENANT = new ResiliencePropertyKey<string>('tenant');
 * context.properties.set(TENANT, 'acme');
 */
export class ResiliencePropertyKey<T> {
  declare readonly __type?: T;
  constructor(readonly name: string) {}

  /**
   * The key registered under `name` for the whole process, like `Symbol.for()`: every copy of
   * resil loaded in the process gets the same key, so values set through one copy are read
   * through another.
   */
  static for<T>(name: string): ResiliencePropertyKey<T> {
    const global = globalThis as { [key: symbol]: Map<string, ResiliencePropertyKey<unknown>> | undefined };
    const registryKey = Symbol.for('resil.propertyKeys');
    global[registryKey] ??= new Map();
    const registry = global[registryKey];
    let key = registry.get(name);
    if (!key) {
      key = new ResiliencePropertyKey<T>(name);
      registry.set(name, key);
    }
    return key as ResiliencePropertyKey<T>;
  }
}

/**
 * Values carried by a {@link ResilienceContext}. A strategy that runs its inner pipeline with a
 * derived context gets a child bag: reads fall back to the parent, writes stay local, so the
 * innermost value wins and an outer one is visible again once the inner scope ends.
 */
export class ResilienceProperties {
  #values: Map<ResiliencePropertyKey<unknown>, unknown> | undefined;
  readonly #parent: ResilienceProperties | undefined;

  constructor(parent?: ResilienceProperties) {
    this.#parent = parent;
  }

  get<T>(key: ResiliencePropertyKey<T>): T | undefined {
    if (this.#values?.has(key)) return this.#values.get(key) as T;
    return this.#parent?.get(key);
  }

  has(key: ResiliencePropertyKey<unknown>): boolean {
    return !!(this.#values?.has(key) || this.#parent?.has(key));
  }

  set<T>(key: ResiliencePropertyKey<T>, value: T): void {
    this.#values ??= new Map();
    this.#values.set(key, value);
  }
}
