"""The catalog's dbt project and its models. `dbt_assets.py` imports dagster-dbt (a second):
only the definitions that include the models import it."""
