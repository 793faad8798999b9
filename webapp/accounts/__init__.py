"""Accounts: login throttling (django-axes) for the login pages and the API's token endpoint."""
