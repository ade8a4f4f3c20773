// placeholder; filled by its module's issue
