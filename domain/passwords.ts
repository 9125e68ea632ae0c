/**
 * SPEC.md's password policy: at least 8 characters, with an uppercase letter, a
 * number and a special symbol. Returns what is missing, or null when it passes.
 */
export function passwordPolicyProblem(password: string): string | null {
  const missing: string[] = [];
  if (password.length < 8) missing.push('at least 8 characters');
  if (!/[A-Z]/.test(password)) missing.push('an uppercase letter');
  if (!/[0-9]/.test(password)) missing.push('a number');
  if (!/[^A-Za-z0-9]/.test(password)) missing.push('a special symbol');
  if (password.length > 256) return 'password must be at most 256 characters';
  return missing.length ? `password needs ${missing.join(', ')}` : null;
}
