"""Launch description, argument parsing and trace rendering shared by every engine."""
