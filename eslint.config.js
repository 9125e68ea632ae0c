// ESLint (flat config): typescript-eslint's recommended rules, imports in one order
// (simple-import-sort, autofixed by `npm run lint:fix`) and no floating promises (a
// promise nobody awaits or catches loses its error, and in a workflow its ordering).
import js from '@eslint/js';
import simpleImportSort from 'eslint-plugin-simple-import-sort';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'node_modules/',
      'data/',
      'dashboard/dist/',
      'cli/dist/',
      'sdk/openapi.ts',
      '.tools/',
      'test-results/',
      '**/*.js',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: {
      parserOptions: {
        // The dashboard's build config is in no tsconfig: linted without type information.
        projectService: { allowDefaultProject: ['dashboard/vite.config.ts'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    plugins: { 'simple-import-sort': simpleImportSort },
    rules: {
      'simple-import-sort/imports': 'error',
      'simple-import-sort/exports': 'error',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      // Input checks match control characters on purpose (headers, URLs, CSV cells).
      'no-control-regex': 'off',
    },
  },
  {
    // Tests, benchmarks and the CLI read the API's JSON answers loosely.
    files: ['test/**/*.ts', 'bench/**/*.ts', 'cli/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
