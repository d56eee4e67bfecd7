-- Stand-in for the SQL NoETL's fixture `script_execution/postgres_file_example.yaml` loads
-- (`scripts/create_test_table.sql`, not in NoETL's fixture set): the table its later steps
-- read and drop. tests/dsl/e2e_needs.py passes its path as `script_path`.
CREATE TABLE IF NOT EXISTS public.script_test (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
INSERT INTO public.script_test (id, name) VALUES (1, 'one'), (2, 'two') ON CONFLICT (id) DO NOTHING;
