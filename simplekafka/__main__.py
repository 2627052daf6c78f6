from simplekafka.cli import main

raise SystemExit(main())
