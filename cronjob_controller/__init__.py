"""A CronJob operator for batch.pyctrl.io/v1 CronJobs, built on pyctrl."""
