"""The results directory: its Parquet schema, records and store, where it lives, the
studies' journals, SQL over it, damaged files, GPU measurements and canonical configurations."""
