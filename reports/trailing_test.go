package reports
