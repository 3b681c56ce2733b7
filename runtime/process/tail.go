package process
