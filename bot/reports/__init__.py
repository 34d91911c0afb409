"""Community speed reports: what people measured on their own machines, beside the estimates."""
