"""The console's forms, one module per page as the views are (shared fields in fields.py): the rules of
rooms/rules.py, subscriptions/rules.py, rooms/schemas.py, worded for operators."""
